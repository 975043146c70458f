// ReDoc of the REST API, started from a file (the page's CSP allows no inline script).
Redoc.init("/openapi.json", {}, document.getElementById("redoc"));
