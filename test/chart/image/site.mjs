// A page on loopback for run-roles.sh: GET / answers a small HTML page and logs each request it served.
import http from 'node:http';
const [host, port] = process.argv.slice(2);
http.createServer((req, res) => {
  console.log(`site: ${req.method} ${req.url}`);
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end('<!doctype html><html><body style="background:#246"><h1 style="color:#fff">tintype images</h1></body></html>');
}).listen(Number(port), host, () => console.log(`site: listening on ${host}:${port}`));
