"""reasonspan inside engines people already run: each sub-package plugs the families'
parsers into one engine's own parser API (``vllm``: docs/vllm.md). Nothing here is
imported by ``import reasonspan``; each engine's package imports its engine."""
