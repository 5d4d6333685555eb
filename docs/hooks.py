"""MkDocs hooks: fill the generated parts of the pages at build time."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
MARKER = "<!-- api-coverage -->"


def on_page_markdown(markdown, page, config, files, **kwargs):
    """Replaces the coverage marker with the coverage of the checkout being built."""
    if MARKER not in markdown:
        return markdown
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.abspath(SRC))   # document this checkout, not an install
    import api_coverage
    return markdown.replace(MARKER, api_coverage.markdown(api_coverage.coverage()))
