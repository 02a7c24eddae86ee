"""The ground floor: the service's vocabulary, errors, named random streams, block draws,
lazy package exports, the version, confidence intervals and key pseudonyms. Imports nothing
of capsim above it.
"""
