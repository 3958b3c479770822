"""The N-sphere world: its data, the assembly of its contact rows, rotation, the neighbour
search, overlaps, packings, inlets and outlets."""
