"""Weight-space merging of checkpoints of one base model: WiSE-FT interpolation (Wortsman et al., CVPR 2022)
and model soups, uniform and greedy (Wortsman et al., ICML 2022). :mod:`.weights` loads and combines
weights; :mod:`.search` picks the interpolation weight and the greedy soup on a dev criterion."""

#: ``merge --method``: WiSE-FT interpolation, a uniform soup, a greedy soup (:mod:`.search`). Here, not in
#: :mod:`.search`, so that the command line lists them without importing torch.
METHODS = ("interpolate", "uniform", "greedy")
