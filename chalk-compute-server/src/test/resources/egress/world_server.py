# The test "internet" of the egress tests: HTTP (80, 8080) and HTTPS (443, 8443) servers and a UDP echo (5353), on
# every address of the network namespace it runs in, IPv4 and IPv6. Each request is appended as a JSON line to
# <dir>/received.jsonl (on the host's file system, which sandboxes never see); the response says little unless the
# path is /echo (then everything received), /redirect?to=URL (a 302), or /bytes?n=N (N bytes).
import http.server, json, os, socket, socketserver, ssl, sys, threading, urllib.parse

d = sys.argv[1]
log_lock = threading.Lock()

def record(rec):
    with log_lock, open(os.path.join(d, 'received.jsonl'), 'a') as f:
        f.write(json.dumps(rec) + '\n')

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    # headers and body go out in separate writes: without this, a kept-alive client waits out delayed ACKs
    disable_nagle_algorithm = True

    def handle_any(self):
        n = int(self.headers.get('Content-Length') or 0)
        u = urllib.parse.urlsplit(self.path)
        if u.path == '/upload':
            left = n
            while left > 0:
                got = self.rfile.read(min(left, 65536))
                if not got:
                    break
                left -= len(got)
            body = 'uploaded %d bytes' % (n - left)
        else:
            body = self.rfile.read(n).decode('utf-8', 'replace') if n else ''
        q = urllib.parse.parse_qs(u.query)
        rec = {'port': self.server.server_address[1], 'tls': self.server.tls,
               'local': self.connection.getsockname()[0],
               'sni': getattr(self.connection, 'chalk_sni', None), 'method': self.command, 'path': self.path,
               'host': self.headers.get('Host'), 'headers': [[k, v] for k, v in self.headers.items()], 'body': body}
        if u.path != '/bytes':
            record(rec)
        if u.path == '/redirect':
            self.send_response(302)
            self.send_header('Location', q['to'][0])
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        if u.path == '/bytes':
            size = int(q['n'][0])
            self.send_response(200)
            self.send_header('Content-Type', 'application/octet-stream')
            self.send_header('Content-Length', str(size))
            self.end_headers()
            chunk = b'x' * 65536
            while size > 0:
                self.wfile.write(chunk[:min(size, len(chunk))])
                size -= len(chunk)
            return
        shown = rec if u.path.startswith('/echo') else {'ok': True, 'port': rec['port'], 'tls': rec['tls'],
                                                         'sni': rec['sni'], 'host': rec['host'], 'path': rec['path']}
        out = (json.dumps(shown) + '\n').encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(out)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    allow_reuse_address = True
    context = None
    tls = False

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.context is not None:
            sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def finish_request(self, request, client_address):
        try:
            if self.context is not None:
                request.settimeout(10)
                request.do_handshake()
                request.settimeout(None)
            super().finish_request(request, client_address)
        except (ssl.SSLError, OSError):
            pass

def tls_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, 'server.pem'), os.path.join(d, 'server-key.pem'))
    def remember(sock, name, _):
        sock.chalk_sni = name
    ctx.sni_callback = remember
    return ctx

servers = []
for port, tls in ((80, False), (8080, False), (443, True), (8443, True)):
    s = Server(('::', port), Handler)
    s.tls = tls
    if tls:
        s.context = tls_context()
    servers.append(s)
    threading.Thread(target=s.serve_forever, daemon=True).start()

udp = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
udp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
udp.bind(('::', 5353))

def echo():
    while True:
        data, addr = udp.recvfrom(2048)
        record({'udp': data.decode('utf-8', 'replace'), 'from': addr[0]})
        udp.sendto(data, addr)

threading.Thread(target=echo, daemon=True).start()
print('ready', flush=True)
threading.Event().wait()
