"""Building dictionaries: :mod:`.sources` reads WordNet, Oxford, TSV, DefSent+ CSV and JSONL;
:mod:`.build` merges, filters, samples and splits; :mod:`.stats` counts. The file itself is
:mod:`defsent_cli.formats.dictionary`."""
