"""The `misguard` command line. Commands call the library, never the other way round."""
