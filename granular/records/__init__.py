"""What a run keeps and writes: step results, frames, trajectories and their HDF5 files,
streaming, configurations."""
