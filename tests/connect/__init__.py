"""The Spark Connect client tests (see conftest.py); a package, so that its conftest is not
imported as tests/conftest."""
