"""Contributed parts of MXNet's API (``mx.contrib``)."""
