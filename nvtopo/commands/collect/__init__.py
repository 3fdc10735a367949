"""``nvtopo collect``: every node's snapshot through an engine, into one directory.

* :mod:`.record`: the record a node sends its snapshot in, and the reader verifying it;
* :mod:`.collector`: the nodes expected, what became of each, the files, the manifest;
* :mod:`.node`: the node side (``nvtopo collect node-record``);
* :mod:`.slurm`: through ``srun``; :mod:`.ray`: through Ray tasks (Ray imported there only).

See docs/collect.md.
"""
