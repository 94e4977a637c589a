"""Vector spaces: :mod:`.linalg` (covariance, the one whitening, L2), :mod:`.transforms` (ICA and
whitening of banks), :mod:`.isotropy` (figures), :mod:`.postprocess` (fitted post-processing chains),
:mod:`.plots` (pictures), :mod:`.dims` (the leading dimensions of vectors: ``--dims``), :mod:`.choices` (what
``ica`` offers, numpy-free)."""
