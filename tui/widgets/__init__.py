"""Widgets of the explorer: they render core results handed to them, nothing more."""
