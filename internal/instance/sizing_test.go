package instance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"example.com/platform-operator/api/v1alpha1"
)

func TestParseMemory(t *testing.T) {
	tests := []struct {
		value string
		want  int64
		ok    bool
	}{
		{"128MB", 128 << 20, true},
		{"1 GB", 1 << 30, true},
		{"'512kB'", 512 << 10, true},
		{"16384", 16384 * 8 << 10, true},
		{"1gb", 0, false},
		{"-1", 0, false},
		{"", 0, false},
		{"MB", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseMemory(tt.value, blockSize)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseMemory(%q) = %d, %v; want %d, %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSizedParameters(t *testing.T) {
	spec := func(storage string, resources *corev1.ResourceRequirements, params map[string]string) v1alpha1.PostgresClusterSpec {
		return v1alpha1.PostgresClusterSpec{Storage: v1alpha1.PostgresStorage{Size: resource.MustParse(storage)}, Resources: resources, Parameters: params}
	}
	memory := func(limit, request string) *corev1.ResourceRequirements {
		r := &corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
		if limit != "" {
			r.Limits[corev1.ResourceMemory] = resource.MustParse(limit)
		}
		if request != "" {
			r.Requests[corev1.ResourceMemory] = resource.MustParse(request)
		}
		return r
	}
	tests := []struct {
		name string
		spec v1alpha1.PostgresClusterSpec
		want map[string]string
	}{
		{
			name: "no memory figure: WAL sized from the volume, memory settings PostgreSQL's",
			spec: spec("10Gi", nil, nil),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "1280MB", "min_wal_size": "80MB"},
		},
		{
			name: "a small volume: the floor of max_wal_size, min_wal_size half of it",
			spec: spec("256Mi", &corev1.ResourceRequirements{}, nil),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "64MB", "min_wal_size": "32MB"},
		},
		{
			name: "a large volume: the ceiling of max_wal_size",
			spec: spec("1Ti", nil, nil),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "8192MB", "min_wal_size": "80MB"},
		},
		{
			name: "4Gi limit",
			spec: spec("10Gi", memory("4Gi", "1Gi"), nil),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "1280MB", "min_wal_size": "80MB",
				"shared_buffers": "1024MB", "effective_cache_size": "3072MB", "maintenance_work_mem": "256MB", "work_mem": "10485kB"},
		},
		{
			name: "a request without a limit sizes from the request",
			spec: spec("10Gi", memory("", "1Gi"), nil),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "1280MB", "min_wal_size": "80MB",
				"shared_buffers": "256MB", "effective_cache_size": "768MB", "maintenance_work_mem": "64MB", "work_mem": "2621kB"},
		},
		{
			name: "256Mi: below PostgreSQL's defaults, which would not fit; work_mem at its floor",
			spec: spec("1Gi", memory("256Mi", ""), nil),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "128MB", "min_wal_size": "64MB",
				"shared_buffers": "64MB", "effective_cache_size": "192MB", "maintenance_work_mem": "16MB", "work_mem": "1024kB"},
		},
		{
			name: "64Gi: maintenance_work_mem at its ceiling",
			spec: spec("100Gi", memory("64Gi", ""), nil),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "8192MB", "min_wal_size": "80MB",
				"shared_buffers": "16384MB", "effective_cache_size": "49152MB", "maintenance_work_mem": "2048MB", "work_mem": "167772kB"},
		},
		{
			name: "the spec's parameters win, whatever their case; its max_connections shares work_mem",
			spec: spec("10Gi", memory("4Gi", ""), map[string]string{"Shared_Buffers": "2GB", "wal_compression": "off", "max_connections": "20"}),
			want: map[string]string{"max_wal_size": "1280MB", "min_wal_size": "80MB",
				"effective_cache_size": "3072MB", "maintenance_work_mem": "256MB", "work_mem": "34952kB"},
		},
		{
			name: "the spec's shared_buffers in pages: work_mem shares what they leave",
			spec: spec("10Gi", memory("4Gi", ""), map[string]string{"shared_buffers": "393216"}),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "1280MB", "min_wal_size": "80MB",
				"effective_cache_size": "3072MB", "maintenance_work_mem": "256MB", "work_mem": "3495kB"},
		},
		{
			name: "the spec's shared_buffers beyond the memory: work_mem at its floor",
			spec: spec("10Gi", memory("1Gi", ""), map[string]string{"shared_buffers": "'2 GB'"}),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "1280MB", "min_wal_size": "80MB",
				"effective_cache_size": "768MB", "maintenance_work_mem": "64MB", "work_mem": "1024kB"},
		},
		{
			name: "the spec's shared_buffers unreadable: work_mem as if sized (its check refuses the value)",
			spec: spec("10Gi", memory("4Gi", ""), map[string]string{"shared_buffers": "2 gigs"}),
			want: map[string]string{"wal_compression": "on", "max_wal_size": "1280MB", "min_wal_size": "80MB",
				"effective_cache_size": "3072MB", "maintenance_work_mem": "256MB", "work_mem": "10485kB"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, sizedParameters(tt.spec)); diff != "" {
				t.Errorf("sizedParameters (-want +got):\n%s", diff)
			}
		})
	}
}
