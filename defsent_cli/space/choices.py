"""What ``defsent ica`` offers, by name: the transform, FastICA's contrast function, its whitening and the
float type it computes in (:mod:`.transforms`).

Kept apart from :mod:`.transforms` (numpy) so that the command line lists them without importing numpy.
"""

from __future__ import annotations

METHODS = ("ica", "whiten")
FUNS = ("logcosh", "exp", "cube")
WHITEN_MODES = ("unit-variance", "arbitrary-variance")
DTYPES = ("float32", "float64")
