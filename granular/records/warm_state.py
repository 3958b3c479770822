"""The scheme's warm state in a run file: the HDF5 group that holds it and the exact
codec of its values (arrays, numbers, tuples and None), shared by the run files of the
command (`granular.app.runs.save_run`, `load_run`) and the streamed ones
(`granular.records.streaming`)."""

from __future__ import annotations

import numpy as np

#: HDF5 group of a run file holding the scheme's state after its last frame
#: (`granular.simulation.Simulation.warm_state`), for ``granular run --from``.
RESTART_GROUP = "restart"


def write_value(group, name: str, value) -> None:
    """An array or number as a dataset; a tuple as a group of items "0", "1", ...;
    None as an empty group marked ``none`` (exact: no conversion of values)."""
    if value is None:
        group.create_group(name).attrs["none"] = True
    elif isinstance(value, tuple):
        items = group.create_group(name)
        items.attrs["tuple"] = len(value)
        for k, item in enumerate(value):
            write_value(items, str(k), item)
    else:
        group.create_dataset(name, data=np.asarray(value))


def read_value(node):
    """The value `write_value` wrote at ``node`` (a dataset or group), exactly."""
    import h5py

    if isinstance(node, h5py.Dataset):
        value = node[()]
        return value if isinstance(value, np.ndarray) else value.item() if hasattr(value, "item") else value
    if node.attrs.get("none"):
        return None
    return tuple(read_value(node[str(k)]) for k in range(int(node.attrs["tuple"])))
