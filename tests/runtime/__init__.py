"""One request's parser and everything under it: machine, text, stops, citations, properties."""
