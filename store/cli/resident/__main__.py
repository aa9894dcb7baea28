"""The resident `boris`, started by the first `boris` that found none
(store.cli.resident.client.START): `python -c START SOCKET PATH…`, PATH… its import path."""

import sys

from .server import end, run, serve

request = serve(sys.argv[1])
if request is not None:
    end(run(request), request.reply)
