"""Weight-space merging of checkpoints of one base model: WiSE-FT interpolation (Wortsman et al., CVPR 2022)
and model soups, uniform and greedy (Wortsman et al., ICML 2022). :mod:`.weights` loads and combines
weights; :mod:`.search` picks the interpolation weight and the greedy soup on a dev criterion."""
