"""Augmented SBERT (Thakur et al. 2021; Reiml 2023, section 4.3): sampling unlabelled pairs from a pool of
sentences (``sampling.py``) and matching a silver score distribution to the gold one (``kde.py``)."""
