package operator

// The operator's own namespace holds its leader election Lease and the events
// about it; the metrics endpoint asks the API server to authenticate and
// authorize each scrape.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=platform-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=platform-operator-system
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
