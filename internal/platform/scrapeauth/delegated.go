package scrapeauth

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenReviewer and SubjectAccessReviewer are the two calls of a Delegated
// review, as the typed clients of client-go offer them.
type TokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

type SubjectAccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Delegated asks as the endpoint's own identity: a TokenReview of the
// token, then a SubjectAccessReview of its user. The endpoint needs create
// on tokenreviews and subjectaccessreviews (cluster-scoped): the operator
// has them; the instance managers use SelfReview instead.
type Delegated struct {
	Tokens TokenReviewer
	Access SubjectAccessReviewer
}

func (d Delegated) Review(ctx context.Context, token, verb, path string) (Decision, error) {
	review, err := d.Tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, createOptions)
	if err != nil {
		return Decision{}, fmt.Errorf("review the token: %w", err)
	}
	if !review.Status.Authenticated {
		return unauthenticated, nil
	}
	user := review.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	access, err := d.Access.Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user.Username,
			UID:                   user.UID,
			Groups:                user.Groups,
			Extra:                 extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, createOptions)
	if err != nil {
		return Decision{}, fmt.Errorf("review the access of %s: %w", user.Username, err)
	}
	if !access.Status.Allowed || access.Status.Denied {
		return denied(user.Username), nil
	}
	return allowed, nil
}
