"""mx.sym.image: symbolic image operators generated from the registry's ``_image_*``
operators."""
