"""Tool calls: the body kinds, the extractor, hostile calls and the CanIToolCall corpus."""
