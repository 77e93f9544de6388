"""Spark's own formats, read the way Spark reads them: spark-submit's command line and
properties files (``submit_args``), and an app's gang from its Spark properties or YuniKorn's
annotations (``gang_properties``). Pure functions over strings and files."""
