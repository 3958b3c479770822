"""Writing images and videos without ever leaving a half-written file in place.

Every output goes through `granular.records.files.atomic_path`: written under a temporary
name and renamed over the target only once complete.

Formats: ``.png`` stills; ``.mp4`` (H.264 through imageio-ffmpeg) and ``.gif``
(Pillow through imageio) animations. Images are (height, width, 3) uint8 arrays.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from ..records.files import atomic_path

VIDEO_SUFFIXES = (".mp4", ".gif")
IMAGE_SUFFIXES = (".png",)
SUFFIXES = VIDEO_SUFFIXES + IMAGE_SUFFIXES


def output_kind(path, allowed=SUFFIXES) -> str:
    """ "video" or "image" for ``path``; `InvalidInputError` for any other extension."""
    suffix = Path(path).suffix.lower()
    if suffix not in allowed:
        shown = ", ".join(allowed)
        raise InvalidInputError(f"unsupported output extension {suffix or '(none)'!r} for {path}: use {shown}")
    return "video" if suffix in VIDEO_SUFFIXES else "image"


def write_image(path, image: np.ndarray) -> Path:
    """Write a (h, w, 3) uint8 image as PNG, atomically."""
    import imageio.v3 as iio

    output_kind(path, IMAGE_SUFFIXES)
    with atomic_path(path) as temporary:
        iio.imwrite(temporary, np.asarray(image, dtype=np.uint8), extension=".png")
    return Path(path)


class VideoWriter:
    """Append frames, then `close()` to finish the file and move it into place.

    Use as a context manager: an exception inside the block discards the partial
    video. MP4 frames are streamed to ffmpeg; GIF frames are kept in memory (GIFs
    are for small pictures) and written at the end.
    """

    def __init__(self, path, fps: float, quality: float = 6.0):
        output_kind(path, VIDEO_SUFFIXES)
        if not fps > 0:
            raise InvalidInputError(f"fps must be positive, got {fps}")
        self.path = Path(path)
        self.fps = float(fps)
        self.quality = quality
        self.frames_written = 0
        self._context = atomic_path(self.path)
        self._temporary = self._context.__enter__()
        self._gif_frames = []
        self._mp4 = None

    def append(self, image: np.ndarray) -> None:
        image = np.asarray(image, dtype=np.uint8)
        if self.path.suffix.lower() == ".gif":
            self._gif_frames.append(image)
        else:
            if self._mp4 is None:
                import imageio.v2 as imageio

                self._mp4 = imageio.get_writer(
                    self._temporary,
                    format="FFMPEG",
                    mode="I",
                    fps=self.fps,
                    codec="libx264",
                    quality=self.quality,
                    pixelformat="yuv420p",
                    macro_block_size=16,
                    ffmpeg_log_level="error",
                )
            self._mp4.append_data(image)
        self.frames_written += 1

    def close(self) -> Path:
        """Finish the file and rename it into place."""
        if self.frames_written == 0:
            self.abort()
            raise InvalidInputError(f"no frames were written to {self.path}")
        if self._mp4 is not None:
            self._mp4.close()
        else:
            import imageio.v3 as iio

            iio.imwrite(
                self._temporary, np.stack(self._gif_frames), extension=".gif", duration=1000.0 / self.fps, loop=0
            )
        self._context.__exit__(None, None, None)
        return self.path

    def abort(self) -> None:
        """Discard the partial file."""
        if self._mp4 is not None:
            with contextlib.suppress(Exception):
                self._mp4.close()
        self._context.__exit__(RuntimeError, RuntimeError("aborted"), None)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.close()
        else:
            self.abort()
        return False
