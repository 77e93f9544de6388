"""Programs that run inside a Spark driver: the notebook API (``notebook``:
``sessionsched.session()``), a Livy interactive session's REPL (``livy_repl``) and a Spark
Connect session's server (``connect_server``, launched by its path as an app file).

Nothing is imported here, so loading one of them loads no other.
"""
