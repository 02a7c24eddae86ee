"""capsim: a discrete-event capacity simulator for a CU-metered API service.

The import package is ``sim``; the distribution and the console script are ``capsim``.
"""

__version__ = "0.1.0"
