package instance

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"example.com/platform-operator/internal/platform/scrapeauth"
)

// serveStatus answers the kubelet's probes: /healthz while the manager
// runs (it restarts PostgreSQL itself, so a crashed PostgreSQL is no reason
// to restart the container), /readyz while PostgreSQL accepts connections.
func serveStatus(ctx context.Context, address string, ready *atomic.Bool, log logr.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "PostgreSQL does not accept connections", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	server := &http.Server{Addr: address, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error(err, "The status server stopped", "address", address)
	}
}

// serveMetrics serves /metrics (metrics.go) over TLS with a certificate
// made at start, as the operator's /metrics is served: each scrape carries
// a bearer token, which must not cross the network in the clear. Only a
// scraper whose token the API server accepts, and whose user may get
// /metrics (ClusterRole platform-operator-metrics-reader), is served:
// package scrapeauth asks the API server with the scraper's own token
// (SelfReview), so the instance's ServiceAccount needs no right for it.
func serveMetrics(ctx context.Context, address string, config *rest.Config, collector prometheus.Collector, log logr.Logger) {
	reviewer, err := scrapeauth.NewSelfReview(config)
	if err != nil {
		log.Error(err, "The metrics server does not start")
		return
	}
	cert, err := selfSignedCertificate()
	if err != nil {
		log.Error(err, "The metrics server does not start")
		return
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collector)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorLog: metricsErrorLog{log}, ErrorHandling: promhttp.ContinueOnError}))
	server := &http.Server{
		Addr:              address,
		Handler:           scrapeauth.New(reviewer, clock.RealClock{}).Handler(log.WithName("metrics"), mux),
		ReadHeaderTimeout: 5 * time.Second,
		// A scrape takes at most scrapeTimeout, after a review.
		WriteTimeout: 30 * time.Second,
		TLSConfig:    &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	if err := server.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error(err, "The metrics server stopped", "address", address)
	}
}

// metricsErrorLog logs what promhttp reports.
type metricsErrorLog struct{ log logr.Logger }

func (l metricsErrorLog) Println(v ...any) { l.log.Info("Metrics", "error", fmt.Sprint(v...)) }

// selfSignedCertificate is an ECDSA P-256 certificate for the metrics
// server, valid for a year: Prometheus scrapes it without verifying
// (insecureSkipVerify), as it scrapes the operator.
func selfSignedCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key of the metrics server: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "platform-postgres-instance-metrics"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate of the metrics server: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
