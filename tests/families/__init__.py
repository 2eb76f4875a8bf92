"""Each family's cases: its matrix rows, fidelity cases and tool-call cases."""
