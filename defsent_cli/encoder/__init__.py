"""The encoder side: :mod:`.models` (local folders), :mod:`.tokenize`, :mod:`.pooling` and
:mod:`.token_weights` (how token states become one vector), :mod:`.encode` (the one encode loop),
:mod:`.spec` (options resolved once into an Encoder), :mod:`.head` (the training head, also used
by the reverse dictionary), :mod:`.choices` (the heads' names, torch-free)."""
