"""schedlab's version, at the bottom of the layers: the manifest and every
task record it, and ``schedlab.__version__`` re-exports it."""

__version__ = "0.1.0"
