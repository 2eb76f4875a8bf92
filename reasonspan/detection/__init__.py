"""Which reasoning parser fits a model folder, and why.

Detection sits above the families: it scores every registered family (built-in or
plugin) against what a folder says about itself. ``scoring`` holds the rules (the facts
a spec cannot say are each family's ``hint``, beside its spec), ``template_text`` the
reading of a chat template as text, ``results`` the returned Structs, ``profile`` the
rendering of the template per thinking setting (where a new turn starts), which parsers use
as their default start.
"""

from reasonspan.detection.results import Candidate, Detection, Evidence, TemplateEvidence
from reasonspan.detection.scoring import describe, detect, detect_tokenizer

__all__ = [
    "Candidate",
    "Detection",
    "Evidence",
    "TemplateEvidence",
    "describe",
    "detect",
    "detect_tokenizer",
]
