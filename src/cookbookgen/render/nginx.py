"""nginx.conf for several Dynamo frontends behind one endpoint. No I/O.

Session affinity (`frontend.nginx_session_affinity`) hashes the session header so one session
stays on one frontend; anonymous requests hash their request id.
"""

from __future__ import annotations

from typing import Any


def nginx_conf(count: int, upstream_port: int, listen_port: int, options: dict[str, Any]) -> str:
    header = str(options.get("nginx_session_affinity_header", "X-Dynamo-Session-ID"))
    affinity = bool(options.get("nginx_session_affinity", False))
    keepalive = str(options.get("nginx_keepalive_timeout", "600s"))
    var = "$http_" + header.lower().replace("-", "_")
    lines = ["worker_processes auto;", "events { worker_connections 65536; }", "http {",
             "    client_max_body_size 45m;", "    access_log off;", f"    keepalive_timeout {keepalive};"]
    if affinity:
        lines += ["    map " + var + " $frontend_hash_key {", f"        default {var};", '        "" $request_id;', "    }"]
    lines.append("    upstream backend_servers {")
    if affinity:
        lines.append("        hash $frontend_hash_key consistent;")
    lines += [f"        server $FRONTEND_{i}_IP:{upstream_port};" for i in range(count)]
    lines += ["        keepalive 512;", "    }", "    server {", f"        listen {listen_port};", "        location / {",
              "            proxy_pass http://backend_servers;", "            proxy_http_version 1.1;",
              '            proxy_set_header Connection "";', "            proxy_buffering off;",
              "            proxy_read_timeout 24h;", "            proxy_send_timeout 24h;", "        }", "    }", "}"]
    return "\n".join(lines) + "\n"
