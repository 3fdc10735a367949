"""The commands layer: what a command does beyond reading its input and printing its result.

The CLI (:mod:`nvtopo.cli`) parses options and calls the library; where a command is more
than "open the input, run a check or a render", that work lives here or in the command's
own module (:mod:`nvtopo.audit`, :mod:`nvtopo.diff`, :mod:`nvtopo.simulate`).  This layer
may use everything below it (render, checks, layouts, snapshot, probes, the model), and
nothing below imports it.
"""
