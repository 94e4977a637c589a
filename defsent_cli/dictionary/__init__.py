"""Building dictionaries: :mod:`.sources` reads WordNet, Oxford, TSV, DefSent+ CSV and JSONL, :mod:`.dictd`
dictd databases (GCIDE, FOLDOC, the Jargon File, ...), :mod:`.glossary` other glossary formats through the
optional pyglossary; :mod:`.build` merges, filters, samples and splits; :mod:`.stats` counts. The file itself
is :mod:`defsent_cli.formats.dictionary`."""
