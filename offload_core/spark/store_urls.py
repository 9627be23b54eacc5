"""Store URLs that name the same store on every host of a Spark job.

A Python worker on an executor runs in its own working directory (the
worker's ``work/<app>/<executor>``) with the worker's ``HOME``, so a
``file://`` URL with a relative or ``~`` root, fine in ``local[*]`` where
every worker shares the driver's, would open a new, empty directory there:
reads fail and deletions silently delete nothing. The driver pins it first.
"""

from __future__ import annotations

import os

__all__ = ["pinned_url"]


def pinned_url(url: str) -> str:
    """``url`` with a ``file://`` root made absolute here (``~`` expanded,
    a relative path joined to this process's working directory), as the
    filesystem driver would resolve it in this process; any other URL as
    it is."""
    scheme, separator, root = url.partition("://")
    if not separator or scheme.lower() != "file" or not root:
        return url
    return f"{scheme}://{os.path.abspath(os.path.expanduser(root))}"
