"""nvtopo: how a GPU node is wired, and whether the wiring is what it should be."""

__version__ = "0.1.0"
