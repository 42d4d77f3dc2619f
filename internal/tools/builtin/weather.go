package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
)

// Default endpoints of get_weather: Open-Meteo's public APIs.
const (
	DefaultWeatherURL   = "https://api.open-meteo.com"
	DefaultGeocodingURL = "https://geocoding-api.open-meteo.com"
)

// weatherTimeout bounds one get_weather call, both requests included.
const weatherTimeout = 10 * time.Second

// maxWeatherResponse bounds how much of a response get_weather decodes.
const maxWeatherResponse = 1 << 20

var weatherSchema = mustSchema(`{
	"type": "object",
	"properties": {
		"city": {
			"type": "string",
			"description": "Name of the city, e.g. \"Tokyo\" or \"Buenos Aires\"",
			"minLength": 1
		}
	},
	"required": ["city"],
	"additionalProperties": false
}`)

// Weather returns the get_weather tool, which reports the current weather in
// {"city": string}, e.g. "Weather in Tokyo, Japan: 22.5 °C, partly cloudy
// (code 2), wind 10.3 km/h".
//
// It asks an Open-Meteo-compatible geocoding API for the city
// (<GeocodingURL>/v1/search?name=<city>&count=1), then the forecast API for
// the current conditions there (<WeatherURL>/v1/forecast?latitude=..&
// longitude=..&current=temperature_2m,weather_code,wind_speed_10m). The base
// URLs come from opts (see Options); requests go through opts.HTTPClient.
//
// A city the geocoder does not know fails with `get_weather: no city named
// "Atlantis"`; a service that cannot be reached or answers 5xx fails with
// `get_weather: weather service unreachable: ...`.
func Weather(opts Options) *agentfleet.Tool {
	w := newWeather(opts)
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        "get_weather",
			Label:       "Current weather",
			Description: "Returns the current weather (temperature, conditions, wind) in a city, looked up by name.",
			InputSchema: weatherSchema,
			Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true},
			Parallel:    true,
			TimeoutMS:   (weatherTimeout + 5*time.Second).Milliseconds(),
		},
		Handler: agentfleet.HandlerFunc(w.call),
	}
}

type weather struct {
	forecastURL, geocodingURL string
	client                    *http.Client
}

// newWeather resolves the defaults of opts for get_weather.
func newWeather(opts Options) *weather {
	w := &weather{
		forecastURL:  strings.TrimRight(opts.WeatherURL, "/"),
		geocodingURL: strings.TrimRight(opts.GeocodingURL, "/"),
		client:       opts.HTTPClient,
	}
	switch {
	case w.forecastURL == "":
		w.forecastURL = DefaultWeatherURL
		if w.geocodingURL == "" {
			w.geocodingURL = DefaultGeocodingURL
		}
	case w.geocodingURL == "":
		// One configured server (a mirror or a test double) serves both.
		w.geocodingURL = w.forecastURL
	}
	if w.client == nil {
		w.client = &http.Client{Timeout: weatherTimeout}
	}
	return w
}

type geocodingResponse struct {
	Results []struct {
		Name      string  `json:"name"`
		Latitude  float64 `json:"latitude"`
		Longitude float64 `json:"longitude"`
		Country   string  `json:"country"`
		Admin1    string  `json:"admin1"`
	} `json:"results"`
}

type forecastResponse struct {
	CurrentUnits struct {
		Temperature string `json:"temperature_2m"`
		WindSpeed   string `json:"wind_speed_10m"`
	} `json:"current_units"`
	Current *struct {
		Time        string   `json:"time"`
		Temperature *float64 `json:"temperature_2m"`
		WeatherCode *float64 `json:"weather_code"`
		WindSpeed   *float64 `json:"wind_speed_10m"`
	} `json:"current"`
}

func (w *weather) call(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get_weather: %w", err)
	}
	city, _, err := stringArg("get_weather", call.Arguments, "city", true)
	if err != nil {
		return nil, err
	}
	city = strings.TrimSpace(city)
	if city == "" {
		return nil, fmt.Errorf("get_weather: argument %q is empty", "city")
	}
	ctx, cancel := context.WithTimeout(ctx, weatherTimeout)
	defer cancel()

	var geo geocodingResponse
	q := url.Values{"name": {city}, "count": {"1"}}
	if err := w.get(ctx, w.geocodingURL+"/v1/search?"+q.Encode(), &geo); err != nil {
		return nil, err
	}
	if len(geo.Results) == 0 {
		return nil, fmt.Errorf("get_weather: no city named %q", city)
	}
	place := geo.Results[0]

	var fc forecastResponse
	q = url.Values{
		"latitude":  {strconv.FormatFloat(place.Latitude, 'f', -1, 64)},
		"longitude": {strconv.FormatFloat(place.Longitude, 'f', -1, 64)},
		"current":   {"temperature_2m,weather_code,wind_speed_10m"},
	}
	if err := w.get(ctx, w.forecastURL+"/v1/forecast?"+q.Encode(), &fc); err != nil {
		return nil, err
	}
	cur := fc.Current
	if cur == nil || cur.Temperature == nil || cur.WeatherCode == nil || cur.WindSpeed == nil {
		return nil, errors.New("get_weather: unexpected response from weather service: no current temperature_2m, weather_code and wind_speed_10m")
	}
	tempUnit := orDefault(fc.CurrentUnits.Temperature, "°C")
	windUnit := orDefault(fc.CurrentUnits.WindSpeed, "km/h")
	code := int(*cur.WeatherCode)
	conditions := weatherConditions(code)

	name := place.Name
	if name == "" {
		name = city
	}
	if place.Country != "" {
		name += ", " + place.Country
	}
	res := agentfleet.TextResult(fmt.Sprintf("Weather in %s: %s %s, %s (code %d), wind %s %s",
		name,
		strconv.FormatFloat(*cur.Temperature, 'f', -1, 64), tempUnit,
		conditions, code,
		strconv.FormatFloat(*cur.WindSpeed, 'f', -1, 64), windUnit))
	res.Details = map[string]any{
		"city":             place.Name,
		"region":           place.Admin1,
		"country":          place.Country,
		"latitude":         place.Latitude,
		"longitude":        place.Longitude,
		"time":             cur.Time,
		"temperature":      *cur.Temperature,
		"temperature_unit": tempUnit,
		"weather_code":     code,
		"conditions":       conditions,
		"wind_speed":       *cur.WindSpeed,
		"wind_speed_unit":  windUnit,
	}
	return res, nil
}

// get fetches u and decodes its JSON body into v, turning every failure into
// the model's error text.
func (w *weather) get(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("get_weather: invalid service url %q: %v", u, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "agentfleet-get_weather/1")
	resp, err := w.client.Do(req)
	if err != nil {
		return w.transportError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxWeatherResponse))
	if err != nil {
		return w.transportError(ctx, err)
	}
	switch {
	case resp.StatusCode >= 500:
		return fmt.Errorf("get_weather: weather service unreachable: %s answered %s", req.URL.Host, resp.Status)
	case resp.StatusCode != http.StatusOK:
		// Open-Meteo explains a rejected request as {"error":true,"reason":...}.
		var e struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(body, &e) == nil && e.Reason != "" {
			return fmt.Errorf("get_weather: weather service rejected the request: %s: %s", resp.Status, e.Reason)
		}
		return fmt.Errorf("get_weather: weather service rejected the request: %s", resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("get_weather: unexpected response from weather service at %s: %v", req.URL.Host, err)
	}
	return nil
}

func (w *weather) transportError(ctx context.Context, err error) error {
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fmt.Errorf("get_weather: weather service unreachable: no answer within %v: %w", weatherTimeout, ctxErr)
	case ctxErr != nil:
		return fmt.Errorf("get_weather: %w", ctxErr)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("get_weather: weather service unreachable: %w", err)
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// weatherConditions describes a WMO weather interpretation code, as used by
// Open-Meteo.
func weatherConditions(code int) string {
	switch code {
	case 0:
		return "clear sky"
	case 1:
		return "mainly clear"
	case 2:
		return "partly cloudy"
	case 3:
		return "overcast"
	case 45:
		return "fog"
	case 48:
		return "depositing rime fog"
	case 51:
		return "light drizzle"
	case 53:
		return "moderate drizzle"
	case 55:
		return "dense drizzle"
	case 56:
		return "light freezing drizzle"
	case 57:
		return "dense freezing drizzle"
	case 61:
		return "slight rain"
	case 63:
		return "moderate rain"
	case 65:
		return "heavy rain"
	case 66:
		return "light freezing rain"
	case 67:
		return "heavy freezing rain"
	case 71:
		return "slight snowfall"
	case 73:
		return "moderate snowfall"
	case 75:
		return "heavy snowfall"
	case 77:
		return "snow grains"
	case 80:
		return "slight rain showers"
	case 81:
		return "moderate rain showers"
	case 82:
		return "violent rain showers"
	case 85:
		return "slight snow showers"
	case 86:
		return "heavy snow showers"
	case 95:
		return "thunderstorm"
	case 96:
		return "thunderstorm with slight hail"
	case 99:
		return "thunderstorm with heavy hail"
	default:
		return "unknown conditions"
	}
}
