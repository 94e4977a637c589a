"""What ``build-dict`` offers by name: the source formats, the WordNet folder it reads by default, and what
``--split`` keeps together.

Kept apart from :mod:`.sources` and :mod:`.build` (which read and merge the sources) so that the command line
lists the choices without importing them.
"""

from __future__ import annotations

from pathlib import Path

#: ``--format``: the readers of :mod:`.sources` (dictd: :mod:`.dictd`; glossary: :mod:`.glossary`)
FORMATS = ("auto", "wordnet", "oxford", "tsv", "defsent-csv", "jsonl", "dictd", "glossary")
DEFAULT_WORDNET_DIR = Path("/usr/share/wordnet")
#: ``--split-by``: the default first
SPLIT_BY = ("definition-group", "entry")
