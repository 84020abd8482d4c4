"""Screens of the explorer: start (metadata + loading), error, main (compare/browse), layer,
kernel detail and help."""
