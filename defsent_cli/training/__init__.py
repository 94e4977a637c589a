"""Training: :mod:`.loop` (the loop and set-up every objective runs), :mod:`.objective` (an objective's contract and
registry), the objectives (:mod:`.definitions`: DefSent+ and DefSent; :mod:`.tsdae`, :mod:`.contrastive`,
:mod:`.pairs`, :mod:`.teachers`), :mod:`.config` (the loop's settings), :mod:`.state` (resumable state),
:mod:`.run` (a run to a checkpoint folder)."""
