package dashboard_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/httpauth"
	"github.com/chromedp/chromedp"
)

// TestDashboardLoginInBrowser opens a dashboard behind the listener's
// guard in headless Chromium: the page is the login form; a wrong token
// shows why; the viewer's token shows the dashboard without actions and
// its Log out ends the session; the writer's token shows the actions, and
// Approve clicked on the page lets a waiting call run. The session cookie
// is out of the page's scripts' reach.
func TestDashboardLoginInBrowser(t *testing.T) {
	const writer, viewer = "browser-writer-0123456789", "browser-viewer-0123456789"
	f := startFleet(t, dashboard.Options{Config: dashboard.Config{
		CanAct:   func(r *http.Request) bool { return httpauth.RoleOf(r) == httpauth.Writer },
		LoggedIn: httpauth.LoggedIn,
	}})
	g := httpauth.New(httpauth.Config{WriterToken: writer, ViewerToken: viewer, Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(g.Wrap(f.dash))
	t.Cleanup(hs.Close)
	// By name, as a person would open it: localhost is allowed.
	base := strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)
	ctx := browser(t)
	dir := screenshots(t)

	// logIn types the token into the login form and clicks Log in, from
	// the page itself, as a person would.
	logIn := func(t *testing.T, token string) {
		t.Helper()
		waitJS(t, ctx, "the login form", `document.querySelector('form#login input#token')`, 10*time.Second)
		tok, _ := json.Marshal(token)
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#token').value = `+string(tok)+`; document.querySelector('#login-button').click(); undefined`)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the login form", `document.querySelector('form#login input#token')`, 10*time.Second)
	screenshot(t, ctx, dir, "login.png")

	t.Run("wrong token", func(t *testing.T) {
		logIn(t, "not-the-token-of-anyone")
		waitJS(t, ctx, "why", `document.querySelector('#login-error') && document.querySelector('#login-error').textContent.includes('not one of this server')`, 10*time.Second)
	})

	t.Run("viewer", func(t *testing.T) {
		logIn(t, viewer)
		waitJS(t, ctx, "the dashboard, read only", `document.body.dataset.replayed === 'true' && document.body.dataset.readOnly === 'true'`, 10*time.Second)
		if evalJS[bool](t, ctx, `document.cookie.includes('agentfleet_session')`) {
			t.Error("the session cookie is readable by the page's scripts")
		}
		if evalJS[bool](t, ctx, `document.querySelector('#logout').hidden`) {
			t.Error("Log out is hidden for a page that logged in")
		}
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#logout-button').click(); undefined`)
		waitJS(t, ctx, "the login form after Log out", `document.querySelector('form#login input#token')`, 10*time.Second)
	})

	t.Run("writer approves", func(t *testing.T) {
		logIn(t, writer)
		waitJS(t, ctx, "the dashboard with actions", `document.body.dataset.replayed === 'true' && document.body.dataset.readOnly === 'false'`, 10*time.Second)
		evalJS[chromedp.Void](t, ctx, `location.hash = encodeURIComponent('guarded/login-appr'); undefined`)
		if err := f.nc.Publish("agent.in.guarded.login-appr", []byte("echo if you may")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the call waiting with its buttons", `document.querySelector('#run[data-session="login-appr"][data-status="running"] .tool[data-tool="echo"] .approval[data-decision="pending"] .approve-button')`, 10*time.Second)
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#run .approve-button').click(); undefined`)
		waitJS(t, ctx, "the approved call's end", `document.querySelector('#run[data-session="login-appr"][data-status="stop"] .tool[data-tool="echo"][data-outcome="ok"] .approval[data-decision="approved"]')`, 10*time.Second)
		screenshot(t, ctx, dir, "logged-in.png")
	})
}
