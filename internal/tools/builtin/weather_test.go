package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeOpenMeteo mimics Open-Meteo's geocoding and forecast endpoints. It
// knows Tokyo and Oslo and records the queries it was sent.
type fakeOpenMeteo struct {
	mu      sync.Mutex
	queries []string
}

func (f *fakeOpenMeteo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.queries = append(f.queries, r.URL.Path+"?"+r.URL.RawQuery)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	switch r.URL.Path {
	case "/v1/search":
		if q.Get("count") != "1" {
			http.Error(w, `{"error":true,"reason":"count must be 1 in this fake"}`, http.StatusBadRequest)
			return
		}
		switch q.Get("name") {
		case "Tokyo":
			fmt.Fprint(w, `{"results":[{"id":1850147,"name":"Tokyo","latitude":35.6895,"longitude":139.69171,"country":"Japan","admin1":"Tokyo","timezone":"Asia/Tokyo"}],"generationtime_ms":0.5}`)
		case "Oslo":
			fmt.Fprint(w, `{"results":[{"name":"Oslo","latitude":59.91273,"longitude":10.74609,"country":"Norway"}]}`)
		default:
			fmt.Fprint(w, `{"generationtime_ms":0.3}`)
		}
	case "/v1/forecast":
		if got, want := q.Get("current"), "temperature_2m,weather_code,wind_speed_10m"; got != want {
			http.Error(w, `{"error":true,"reason":"bad current"}`, http.StatusBadRequest)
			return
		}
		switch q.Get("latitude") + "," + q.Get("longitude") {
		case "35.6895,139.69171":
			fmt.Fprint(w, `{"latitude":35.7,"longitude":139.6875,"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C","weather_code":"wmo code","wind_speed_10m":"km/h"},"current":{"time":"2026-11-30T11:15","interval":900,"temperature_2m":22.5,"weather_code":2,"wind_speed_10m":10.3}}`)
		case "59.91273,10.74609":
			fmt.Fprint(w, `{"current_units":{"temperature_2m":"°F","wind_speed_10m":"mp/h"},"current":{"time":"2026-11-30T11:15","temperature_2m":-3,"weather_code":73,"wind_speed_10m":4}}`)
		default:
			http.Error(w, `{"error":true,"reason":"Latitude must be in range of -90 to 90°."}`, http.StatusBadRequest)
		}
	default:
		http.NotFound(w, r)
	}
}

func TestWeather(t *testing.T) {
	fake := &fakeOpenMeteo{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	tool := Weather(Options{WeatherURL: srv.URL + "/"})
	tests := []struct {
		city string
		want string
	}{
		{"Tokyo", "Weather in Tokyo, Japan: 22.5 °C, partly cloudy (code 2), wind 10.3 km/h"},
		{" Oslo ", "Weather in Oslo, Norway: -3 °F, moderate snowfall (code 73), wind 4 mp/h"},
	}
	for _, tt := range tests {
		t.Run(tt.city, func(t *testing.T) {
			res, err := run(context.Background(), t, tool, map[string]any{"city": tt.city})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := text(res), tt.want; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
		})
	}
	res, err := run(context.Background(), t, tool, map[string]any{"city": "Tokyo"})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"city": "Tokyo", "country": "Japan", "region": "Tokyo",
		"latitude": 35.6895, "longitude": 139.69171, "time": "2026-11-30T11:15",
		"temperature": 22.5, "temperature_unit": "°C", "weather_code": 2,
		"conditions": "partly cloudy", "wind_speed": 10.3, "wind_speed_unit": "km/h",
	} {
		if got := res.Details[key]; got != want {
			t.Errorf("details[%q] = %#v, want %#v", key, got, want)
		}
	}

	fake.mu.Lock()
	defer fake.mu.Unlock()
	if got, want := fake.queries[0], "/v1/search?count=1&name=Tokyo"; got != want {
		t.Errorf("first query = %s, want %s", got, want)
	}
	if got, want := fake.queries[1], "/v1/forecast?current=temperature_2m%2Cweather_code%2Cwind_speed_10m&latitude=35.6895&longitude=139.69171"; got != want {
		t.Errorf("second query = %s, want %s", got, want)
	}
}

func TestWeatherSeparateGeocodingURL(t *testing.T) {
	geoFake, forecastFake := &fakeOpenMeteo{}, &fakeOpenMeteo{}
	geo := httptest.NewServer(geoFake)
	defer geo.Close()
	forecast := httptest.NewServer(forecastFake)
	defer forecast.Close()
	tool := Weather(Options{WeatherURL: forecast.URL, GeocodingURL: geo.URL, HTTPClient: &http.Client{}})
	if _, err := run(context.Background(), t, tool, map[string]any{"city": "Tokyo"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		fake *fakeOpenMeteo
		want string
	}{{"geocoding", geoFake, "/v1/search"}, {"forecast", forecastFake, "/v1/forecast"}} {
		tt.fake.mu.Lock()
		if got, want := len(tt.fake.queries), 1; got != want {
			t.Errorf("%s server got %d queries, want %d", tt.name, got, want)
		} else if !strings.HasPrefix(tt.fake.queries[0], tt.want+"?") {
			t.Errorf("%s server got %s, want %s", tt.name, tt.fake.queries[0], tt.want)
		}
		tt.fake.mu.Unlock()
	}
}

func TestWeatherDefaults(t *testing.T) {
	tests := []struct {
		name          string
		opts          Options
		wantForecast  string
		wantGeocoding string
	}{
		{"none", Options{}, DefaultWeatherURL, DefaultGeocodingURL},
		{"weather only", Options{WeatherURL: "http://meteo.test/"}, "http://meteo.test", "http://meteo.test"},
		{"geocoding only", Options{GeocodingURL: "http://geo.test"}, DefaultWeatherURL, "http://geo.test"},
		{"both", Options{WeatherURL: "http://w.test", GeocodingURL: "http://g.test"}, "http://w.test", "http://g.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWeather(tt.opts)
			if got, want := w.forecastURL, tt.wantForecast; got != want {
				t.Errorf("forecast URL = %s, want %s", got, want)
			}
			if got, want := w.geocodingURL, tt.wantGeocoding; got != want {
				t.Errorf("geocoding URL = %s, want %s", got, want)
			}
			if w.client == nil {
				t.Error("no HTTP client")
			}
		})
	}
}

func TestWeatherErrors(t *testing.T) {
	fake := httptest.NewServer(&fakeOpenMeteo{})
	defer fake.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>not json</html>")
	}))
	defer garbage.Close()
	noCurrent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/search" {
			fmt.Fprint(w, `{"results":[{"name":"Tokyo","latitude":1,"longitude":2,"country":"Japan"}]}`)
			return
		}
		fmt.Fprint(w, `{"current":{"time":"2026-11-30T11:15"}}`)
	}))
	defer noCurrent.Close()
	// A server that is closed at once: its address refuses connections.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	failingHost := strings.TrimPrefix(failing.URL, "http://")
	garbageHost := strings.TrimPrefix(garbage.URL, "http://")
	tests := []struct {
		name       string
		url        string
		args       map[string]any
		want       string
		wantPrefix bool
	}{
		{"unknown city", fake.URL, map[string]any{"city": "Atlantis"}, `get_weather: no city named "Atlantis"`, false},
		{"empty city", fake.URL, map[string]any{"city": "  "}, `get_weather: argument "city" is empty`, false},
		{"missing city", fake.URL, map[string]any{}, `get_weather: missing required argument "city"`, false},
		{"5xx", failing.URL, map[string]any{"city": "Tokyo"}, "get_weather: weather service unreachable: " + failingHost + " answered 503 Service Unavailable", false},
		{"connection refused", closed.URL, map[string]any{"city": "Tokyo"}, "get_weather: weather service unreachable: ", true},
		{"not json", garbage.URL, map[string]any{"city": "Tokyo"}, "get_weather: unexpected response from weather service at " + garbageHost + ": ", true},
		{"no current weather", noCurrent.URL, map[string]any{"city": "Tokyo"}, "get_weather: unexpected response from weather service: no current temperature_2m, weather_code and wind_speed_10m", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(context.Background(), t, Weather(Options{WeatherURL: tt.url}), tt.args)
			if err == nil {
				t.Fatalf("got %q, want error %q", text(res), tt.want)
			}
			if tt.wantPrefix {
				if !strings.HasPrefix(err.Error(), tt.want) {
					t.Errorf("error = %q, want prefix %q", err, tt.want)
				}
				return
			}
			if got, want := err.Error(), tt.want; got != want {
				t.Errorf("error = %q, want %q", got, want)
			}
		})
	}
}

func TestWeatherRejected(t *testing.T) {
	// Oslo's coordinates are unknown to a forecast server that only knows
	// Tokyo's, so it answers 400 with Open-Meteo's error body.
	geo := httptest.NewServer(&fakeOpenMeteo{})
	defer geo.Close()
	forecast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":true,"reason":"Latitude must be in range of -90 to 90°."}`, http.StatusBadRequest)
	}))
	defer forecast.Close()
	_, err := run(context.Background(), t, Weather(Options{WeatherURL: forecast.URL, GeocodingURL: geo.URL}), map[string]any{"city": "Oslo"})
	if got, want := fmt.Sprint(err), "get_weather: weather service rejected the request: 400 Bad Request: Latitude must be in range of -90 to 90°."; got != want {
		t.Errorf("error = %s, want %s", got, want)
	}
}

func TestWeatherCancel(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, t, Weather(Options{WeatherURL: srv.URL}), map[string]any{"city": "Tokyo"})
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("request did not reach the server within 10 s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("get_weather did not return within 10 s of cancellation")
	}
}
