package httpauth

import (
	"fmt"
	"html"
	"mime"
	"net/http"
	"time"
)

// serveLogin serves GET /login (the page), POST /login (the token, from
// the page's form) and POST /logout.
func (g *Guard) serveLogin(w http.ResponseWriter, r *http.Request, cookie string) {
	switch {
	case r.URL.Path == "/login" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		loginPage(w, http.StatusOK, "")
	case r.URL.Path == "/login" && r.Method == http.MethodPost:
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
			Error(w, r, http.StatusUnsupportedMediaType, "POST /login takes the form of the login page (application/x-www-form-urlencoded, field token)")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		if err := r.ParseForm(); err != nil {
			Error(w, r, http.StatusBadRequest, "reading the login form: "+err.Error())
			return
		}
		tok := r.PostForm.Get("token")
		role := Anonymous
		switch {
		case equal(tok, g.cfg.WriterToken):
			role = Writer
		case equal(tok, g.cfg.ViewerToken):
			role = Viewer
		}
		if role == Anonymous {
			g.cfg.Logger.Info("http: login refused: wrong token", "remote", r.RemoteAddr)
			loginPage(w, http.StatusUnauthorized, "That token is not one of this server's.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: g.sessions.issue(role, time.Now()), Path: "/",
			MaxAge: int(g.cfg.SessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
		g.cfg.Logger.Info("http: logged in", "role", role, "remote", r.RemoteAddr)
		http.Redirect(w, r, "./", http.StatusSeeOther)
	case r.URL.Path == "/logout" && r.Method == http.MethodPost:
		if cookie != "" {
			g.sessions.revoke(cookie, time.Now())
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
		http.Redirect(w, r, "login", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		Error(w, r, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+": use GET /login for the page, POST /login to log in, POST /logout to log out")
	}
}

// overTLS reports whether the browser reached the listener over TLS: a
// cookie set then is Secure. X-Forwarded-Proto is taken from anyone, since
// it can only make the cookie stricter.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// loginPage answers the login page, with a message when not empty.
func loginPage(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the form's POST, which the Origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(code)
	p := ""
	if msg != "" {
		p = `<p id="login-error" role="alert">` + html.EscapeString(msg) + `</p>`
	}
	fmt.Fprintf(w, loginHTML, p)
}

// loginHTML is the login page; %s is the message. The form posts to login
// relative to the page, so that it works under a proxy's path prefix.
const loginHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentfleet: log in</title>
<style>
body { font: 15px system-ui, sans-serif; display: flex; justify-content: center; margin-top: 15vh; color: #222; }
form { display: flex; flex-direction: column; gap: .6em; width: 22em; }
input, button { font: inherit; padding: .4em; }
#login-error { color: #b00; margin: 0; }
</style>
</head>
<body>
<form id="login" method="post" action="login">
<h1>agentfleet</h1>
%s
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button id="login-button" type="submit">Log in</button>
</form>
</body>
</html>
`
