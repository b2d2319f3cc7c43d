"""centidb: an embedded, indexed document-collection database."""

__version__ = "0.1.0"
