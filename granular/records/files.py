"""Writing output files without ever leaving a half-written file in place.

A file is written under a temporary name in its destination directory (same
extension, so encoders pick the right format) and renamed over the target only
once complete (`os.replace`, atomic on one file system). A failure or an interrupt
removes the temporary file and leaves any previous file untouched. A new file gets
the umask's permissions (``0666 & ~umask``, not mkstemp's 0600); a replaced file
keeps its mode.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; rename it to ``path`` if the block succeeds."""
    path = Path(path)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp" + path.suffix, dir=path.parent)
        os.close(handle)
        yield Path(temporary)
        os.chmod(temporary, file_mode(path))
        os.replace(temporary, path)
    except OSError as error:
        raise _naming(error, path, temporary) from error
    finally:
        if temporary is not None and os.path.exists(temporary):
            os.remove(temporary)


def _naming(error: OSError, path: Path, temporary) -> OSError:
    """``error`` saying ``path``, the file the caller asked for, where it said the
    temporary file (whose random name, ``.e._lw66j9v.tmp.png``, means nothing to the
    user) or nothing. A failure of mkstemp names a candidate temporary name we never
    saw, so any file name under the destination's directory counts as temporary."""
    named = error.filename
    ours = (
        named is None
        or (temporary is not None and str(named) == str(temporary))
        or Path(str(named)).name.startswith(f".{path.stem}.")
    )
    if not ours or error.errno is None:
        return error
    return type(error)(error.errno, error.strerror, str(path))


def file_mode(path) -> int:
    """The permission bits of the file at ``path``, or those a new file gets under the umask."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
