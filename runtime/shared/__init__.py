"""What several families share beyond the spec, so that no family module imports another.

``messages``: the machine for formats that route whole messages by their header (harmony's
``<|start|>`` … ``<|message|>`` … ``<|end|>``; openai_gptoss and muse_glimmer each give it
their structural tokens and header rule). ``switches``: thinking switches read as one (on
when any given one is true). ``hint``: what a family tells detection beside its spec.

Nothing else in the runtime imports this package: it is the top of the runtime's
sub-packages, and only family modules (and detection, for the hint) use it.
"""
