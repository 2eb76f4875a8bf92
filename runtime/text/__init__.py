"""What labelled tokens become as text: detokenization after the split (``decoding``),
text formatters and trims (``formatters``), trailing runs held for a trim (``trails``),
inline citations (``citations``), decoder states shared by a batch's requests
(``decoder_states``), per-token escaped text (``token_text``) and the parser's return
Structs (``results``)."""
