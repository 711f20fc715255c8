"""kairox-ui: the dashboard (``kairox ui``, a local web app) and ``kairox watch``.

``hooks`` registers the commands; the app (starlette + uvicorn) is imported only
when ``kairox ui`` runs.
"""

from __future__ import annotations
