"""DefSent+ training: :mod:`.entry_bank` (AC/AMP banks), :mod:`.config`, :mod:`.data` (definitions and
batches), :mod:`.loss` (bank cross-entropy), :mod:`.state` (resumable state), :mod:`.trainer` (one PST
step)."""
