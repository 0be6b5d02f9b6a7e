"""Model folders we write get the file modes any new file gets under the user's umask.

safetensors 0.8's `save_file` (behind `save_pretrained`) writes through a private temporary
file and renames it, so `model.safetensors` arrives 0600 while every other file of the folder
is 0644 under the usual umask 022: another user (or a container running as another uid) can
read the config but not the weights. `match_umask` gives every regular file under a folder the
mode `open()` would have given it; it changes nothing else.
"""

from __future__ import annotations

import os
import stat


def current_umask() -> int:
    """The process's umask, read from /proc where it exists (setting it, even back, would race threads)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def match_umask(folder: str) -> None:
    """Sets every regular file under `folder` to 0666 minus the umask (links are left alone)."""
    mode = 0o666 & ~current_umask()
    for root, _folders, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.chmod(path, mode)
