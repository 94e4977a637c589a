"""Entry banks for ``embed-entries``: :mod:`.entry_bank` (AC/AMP banks, built part by part), :mod:`.domain_text` (from domain text)."""
