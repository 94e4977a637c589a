"""The files defsent reads and writes, one module per format; ``docs/formats.md`` is their contract.

- :mod:`.dictionary`: the dictionary JSONL (one entry per line, line order = entry id);
- :mod:`.bank`: the HDF5 entry bank;
- :mod:`.checkpoint`: the checkpoint folder (Hugging Face model + ``defsent.json`` + model card);
- :mod:`.vectors`: encoded vectors (.npy, .h5, .jsonl) and any (n, d) matrix to inspect;
- :mod:`.post`: a fitted post-processing chain (HDF5);
- :mod:`.results`: the head every results JSON shares;
- :mod:`.curves`: a run folder's loss and dev curves (``defsent plot``);
- :mod:`.index`: a text index (``defsent index``);
- :mod:`.tensors`: a safetensors file with a JSON document in its metadata (training state, word head).
"""
