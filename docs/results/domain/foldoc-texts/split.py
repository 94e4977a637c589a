# StackOverflow's 20,000 titles (../shared/data/clustering/stackoverflow/stackoverflow_true_text, label<TAB>title)
# halved by a seeded permutation: half A's titles (no labels) are the domain text of embed-entries --texts
# (so-texts.txt), half B (labels kept, the file's layout) is the clustering set the models are scored on
import numpy as np
lines = open("/work/shared/data/clustering/stackoverflow/stackoverflow_true_text", encoding="utf-8").read().splitlines()
perm = np.random.default_rng(0).permutation(len(lines))
a, b = sorted(perm[: len(lines) // 2]), sorted(perm[len(lines) // 2 :])
open("so-texts.txt", "w").write("".join(lines[i].split("\t")[1].strip() + "\n" for i in a))
open("data/clustering/stackoverflow/stackoverflow_true_text", "w").write("".join(lines[i] + "\n" for i in b))
